package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"mime/multipart"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/profiles"
	"github.com/switchboard-dev/switchboard/domain/account"
)

var _ profiles.Provider = (*Provider)(nil)

// SetProfileName makes name the bot's name for every language without a
// name of its own: setMyName {"name": "…"} (0-64 characters, checked
// before).
func (p *Provider) SetProfileName(ctx context.Context, _ account.Number, settings map[string]string, name string) (profiles.Outcome, error) {
	var done bool
	if err := p.Client.Call(ctx, settings, "setMyName", map[string]any{"name": name}, &done); err != nil {
		return profiles.Outcome{}, err
	}
	if !done {
		return profiles.Outcome{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API answered setMyName without true"}
	}
	return profiles.Outcome{Applied: true}, nil
}

// profilePhotoPart names the multipart part that carries the picture.
const profilePhotoPart = "profile_photo"

// SetProfilePicture makes the picture the bot's profile photo:
// setMyProfilePhoto as multipart/form-data, its photo parameter the
// InputProfilePhotoStatic {"type":"static","photo":"attach://profile_photo"}
// and the part profile_photo the picture as a JPEG (a PNG is converted:
// static profile photos are JPEG).
func (p *Provider) SetProfilePicture(ctx context.Context, _ account.Number, settings map[string]string, pic profiles.Picture) (profiles.Outcome, error) {
	photo, err := asJPEG(pic)
	if err != nil {
		return profiles.Outcome{}, &messaging.ProviderError{Code: "media_unreadable", Message: "the picture cannot be converted to JPEG: " + err.Error(), Permanent: true}
	}
	input, err := json.Marshal(map[string]string{"type": "static", "photo": "attach://" + profilePhotoPart})
	if err != nil {
		return profiles.Outcome{}, err
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	if err := w.WriteField("photo", string(input)); err != nil {
		return profiles.Outcome{}, err
	}
	part, err := w.CreateFormFile(profilePhotoPart, "profile.jpg")
	if err != nil {
		return profiles.Outcome{}, err
	}
	if _, err := part.Write(photo); err != nil {
		return profiles.Outcome{}, err
	}
	if err := w.Close(); err != nil {
		return profiles.Outcome{}, err
	}
	if settings[SettingBotToken] == "" {
		return profiles.Outcome{}, &messaging.ProviderError{Code: "provider_misconfigured", Message: ErrNoToken.Error(), Permanent: true}
	}
	var done bool
	if err := p.Client.do(ctx, settings, "setMyProfilePhoto", w.FormDataContentType(), &body, &done); err != nil {
		return profiles.Outcome{}, err
	}
	if !done {
		return profiles.Outcome{}, &messaging.ProviderError{Code: "provider_unavailable", Message: "the Bot API answered setMyProfilePhoto without true"}
	}
	return profiles.Outcome{Applied: true}, nil
}

// jpegQuality is the quality a PNG picture is encoded at.
const jpegQuality = 90

// asJPEG is the picture's bytes as a JPEG: a JPEG as it is, a PNG decoded
// and encoded again.
func asJPEG(pic profiles.Picture) ([]byte, error) {
	if pic.ContentType == "image/jpeg" {
		return pic.Data, nil
	}
	img, err := png.Decode(bytes.NewReader(pic.Data))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, flatten(img), &jpeg.Options{Quality: jpegQuality}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// flatten draws img over white, so that transparent pixels of a PNG become
// white in the JPEG rather than black.
func flatten(img image.Image) image.Image {
	b := img.Bounds()
	out := image.NewRGBA(b)
	draw.Draw(out, b, image.White, image.Point{}, draw.Src)
	draw.Draw(out, b, img, b.Min, draw.Over)
	return out
}
